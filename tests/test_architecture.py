"""The shape of the package, checked from its source with ``ast``.

* The import graph of ``bayesnb`` (every ``import`` statement, at module level or inside
  a function, except under ``if TYPE_CHECKING:``) is acyclic.
* The folders are layers (``core`` < ``io`` < ``analysis`` < ``ppl`` < ``scale`` <
  ``estimators`` < ``sklearn`` < ``cli``): a module imports only from its own layer or those below it, so
  nothing below the estimators can reach an estimator.
* Every ``bayesnb.…`` module an import statement names exists in the layered layout (the
  flat names of a layout never released, ``bayesnb.uncertainty``, ..., do not import).
* No module outside ``bayesnb/core/families/`` switches on a family's identity: no comparison
  (``is``, ``==``, ``in``, …) against a family module, a registered ``Family`` value or a
  registered family's name, and no table keyed by them. Layers reach families through
  the protocol and the registry (``bayesnb.core.families.get``).
* No module tests for an estimator or prior class (``isinstance``, ``issubclass``,
  ``type(x) is``, ``__name__ ==``, by bare or dotted name) except the class's own module,
  ``core/families/``, ``core/priors.py`` and ``core/class_prior.py``; the estimator front
  (``estimators/``, ``sklearn/``) may test ``BaseNB`` and the priors a user passes in.

Every check is tested on planted violations too, so that it cannot pass vacuously.
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


# ----------------------------------------------------------------------------- layers

#: The layers, lowest first. Top-level leaf modules (exceptions, _version)
#: import nothing of bayesnb and may be imported from anywhere.
LAYERS = ("core", "io", "analysis", "ppl", "scale", "estimators", "sklearn", "cli")
TOP = PACKAGE.name


def _layer(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def layer_violations(edges):
    """``[(importer, imported)]`` where a module imports from a higher layer."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    found = []
    for src, targets in edges.items():
        for dst in targets:
            a, b = _layer(src), _layer(dst)
            if b is None:
                if dst.count(".") == 0 and src.count(".") and _layer(src) != "cli":
                    found.append((src, dst))  # the package itself imports every layer
                continue
            if a is None:
                continue  # bayesnb/__init__ and __main__ sit above every layer
            if rank[b] > rank[a]:
                found.append((src, dst))
    return sorted(found)


def test_the_folders_are_layers_and_every_module_sits_in_one():
    modules = _modules(PACKAGE)
    loose = sorted(m for m in modules if _layer(m) is None and m.count(".") == 1)
    assert loose == [f"{TOP}.__main__", f"{TOP}._version", f"{TOP}.exceptions"]
    assert {_layer(m) for m in modules} - {None} == set(LAYERS)
    assert layer_violations(import_graph(PACKAGE)) == []


def test_the_layer_check_catches_an_upward_import(tmp_path):
    pkg = tmp_path / "pkg"
    _write(
        pkg,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "core/a.py": "def f():\n    from pkg.estimators import e\n",
            "estimators/__init__.py": "",
            "estimators/e.py": "from pkg.core import a\n",
        },
    )
    assert layer_violations(import_graph(pkg)) == [("pkg.core.a", "pkg.estimators.e")]
    (pkg / "core" / "a.py").write_text("")
    assert layer_violations(import_graph(pkg)) == []


def _missing_modules(root):
    """``[(module, line, target)]``: an import statement naming a package module that is not there."""
    modules = _modules(root)
    top = root.name
    found = []
    for name, (path, is_pkg) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                targets = [_imported_base(node, name, is_pkg)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found += [(name, node.lineno, t) for t in targets if t.startswith(top + ".") and t not in modules]
    return found


def _imported_base(node, name, is_pkg):
    if not node.level:
        return node.module or ""
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def test_every_imported_package_module_exists():
    assert _missing_modules(PACKAGE) == []


def test_the_module_check_catches_a_flat_layout_name(tmp_path):
    pkg = tmp_path / "pkg"
    _write(
        pkg,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "core/uncertainty.py": "",
            "cli/__init__.py": "def f():\n    from pkg.uncertainty import x\n    from ..core import uncertainty\n",
        },
    )
    assert _missing_modules(pkg) == [("pkg.cli", 2, "pkg.uncertainty")]


def test_the_flat_layout_names_do_not_import():
    import importlib

    import bayesnb

    for old in ("bayesnb.uncertainty", "bayesnb.families.poisson", "bayesnb.priors", "bayesnb.models"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    # The short names the documentation uses are the layered modules, re-exported explicitly.
    assert bayesnb.families is families
    assert bayesnb.plots is importlib.import_module("bayesnb.analysis.plots")


# ----------------------------------------------------------------------------- private hooks


#: The estimator front: the classes with state (bayesnb.sklearn subclasses the estimators).
FRONT = ("estimators", "sklearn")


def estimator_private_names(root):
    """Private method names defined by the estimator classes (``FRONT``) and nowhere else."""
    inside, outside = set(), set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for f in node.body:
                    if isinstance(f, ast.FunctionDef) and f.name.startswith("_") and not f.name.startswith("__"):
                        front = set(FRONT) & set(path.relative_to(root).parts)
                        (inside if front else outside).add(f.name)
    return inside - outside


def private_hook_uses(path, names):
    """``[(line, source)]`` where ``path`` reaches one of ``names`` on an object other than self."""
    found = []
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in names:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_outside_the_estimators_calls_their_private_hooks():
    names = estimator_private_names(PACKAGE)
    assert {"_compute_stats", "_check_X_y", "_refresh", "_feature_posterior"} <= names
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if not set(FRONT) & set(p.relative_to(PACKAGE).parts)]
    uses = {str(p.relative_to(PACKAGE.parent)): hits for p in outside if (hits := private_hook_uses(p, names))}
    assert uses == {}


def test_the_private_hook_finder_catches_a_planted_call(tmp_path):
    path = tmp_path / "planted.py"
    path.write_text("def f(est, X):\n    return est._compute_stats(X, None, None)\n")
    assert private_hook_uses(path, {"_compute_stats"}) == [(2, "est._compute_stats")]
    path.write_text("class A:\n    def g(self):\n        return self._compute_stats\n")
    assert private_hook_uses(path, {"_compute_stats"}) == []


# ----------------------------------------------------------------------------- mixed models


#: The layers that see a mixed model through its product family (``family_.blocks`` and the
#: dict pytrees, bayesnb.core._fitted.blocks), never through its fitted block estimators.
FAMILY_ONLY = ("core", "analysis", "ppl", "scale")
BLOCK_ESTIMATORS = {"estimators_", "named_estimators_"}


def block_estimator_reads(path):
    """``[(line, source)]`` where ``path`` reads a mixed model's block estimators (by attribute or getattr/hasattr)."""
    found = []
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in BLOCK_ESTIMATORS:
            found.append((node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in BLOCK_ESTIMATORS
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_layers_below_the_estimators_read_mixed_models_through_the_family():
    below = [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] in FAMILY_ONLY]
    assert len(below) > 20
    reads = {str(p.relative_to(PACKAGE.parent)): hits for p in below if (hits := block_estimator_reads(p))}
    assert reads == {}


def test_the_block_estimator_finder_catches_planted_reads(tmp_path):
    path = tmp_path / "planted.py"
    path.write_text("def f(est):\n    a = est.estimators_\n    return getattr(est, 'named_estimators_', None), a\n")
    assert block_estimator_reads(path) == [(2, "est.estimators_"), (3, "getattr(est, 'named_estimators_', None)")]
    path.write_text("def f(est):\n    return est.family_.blocks\n")
    assert block_estimator_reads(path) == []


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
    inside = PACKAGE / "core" / "families"
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if inside not in p.parents]
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


# ------------------------------------------------------------- the estimator stays at the front


def _fitted_attribute(name):
    """An estimator-only name: a scikit-learn fitted attribute (``posterior_``, ``classes_``), not a dunder."""
    return len(name) > 1 and name.endswith("_") and not name.startswith("_") and not name.endswith("__")


def estimator_attribute_reads(path):
    """``[(line, source)]`` where a function of ``path`` reads a fitted (trailing-underscore) attribute off an argument.

    An argument of any function (nested functions and lambdas included), read by
    attribute (``estimator.posterior_``) or by ``getattr`` / ``hasattr`` with a constant
    name (``getattr(estimator, "temperature_", 1.0)``): below the front, functions get a
    fitted-model pytree, whose fields carry no trailing underscore.
    """
    found = set()

    def visit(node, params):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            own = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            own |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
            # An argument of this function or of one around it (a closure reads it too).
            params = params | (own - {"self", "cls"})
        elif (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in params and _fitted_attribute(node.attr)
        ):
            found.add((node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name) and node.args[0].id in params
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
            and _fitted_attribute(node.args[1].value)
        ):
            found.add((node.lineno, ast.unparse(node)))
        for child in ast.iter_child_nodes(node):
            visit(child, params)

    visit(ast.parse(Path(path).read_text(encoding="utf-8")), frozenset())
    return sorted(found)


def test_no_function_under_core_reads_an_estimator_attribute():
    # The layers below the estimators take a fitted-model pytree (bayesnb.core._fitted.
    # FittedModel), built once at the front by BaseNB.fitted_model.
    core = sorted((PACKAGE / "core").rglob("*.py"))
    assert len(core) > 20
    reads = {str(p.relative_to(PACKAGE.parent)): hits for p in core if (hits := estimator_attribute_reads(p))}
    assert reads == {}


def test_the_estimator_attribute_finder_catches_the_former_fitted_module(tmp_path):
    # Functions as bayesnb/core/_fitted.py had them before the fitted-model pytree (commit 1e580ec).
    path = tmp_path / "former.py"
    path.write_text(
        "def is_mixed(estimator):\n"
        "    return getattr(estimator, 'family_', None) is not None and estimator.family_.blocks is not None\n"
        "def temperature(estimator):\n"
        "    return float(getattr(estimator, 'temperature_', 1.0))\n"
        "def class_log_draws(key, estimator, n, *, prior=False):\n"
        "    dist = estimator.class_dirichlet_ if prior else estimator.class_posterior_\n"
        "    return lambda: estimator.classes_\n"
    )
    assert estimator_attribute_reads(path) == [
        (2, "estimator.family_"),
        (2, "getattr(estimator, 'family_', None)"),
        (4, "getattr(estimator, 'temperature_', 1.0)"),
        (6, "estimator.class_dirichlet_"),
        (6, "estimator.class_posterior_"),
        (7, "estimator.classes_"),
    ]
    # The pytree's fields, a module's own names, NumPy's dtypes and dunders are not estimator reads.
    path.write_text(
        "import numpy as np\n"
        "def f(fitted, x):\n"
        "    return fitted.posterior, fitted.family.blocks, np.bool_, x.__class__, x._private_\n"
    )
    assert estimator_attribute_reads(path) == []


# ----------------------------------------------------------------------------- one empirical Bayes

EMPIRICAL_BAYES = PACKAGE / "core" / "empirical_bayes.py"


def _prior_and_stats_classes():
    import bayesnb.core.priors as priors
    import bayesnb.core.stats as stats

    return {
        name
        for module in (priors, stats)
        for name, value in vars(module).items()
        if isinstance(value, type) and value.__module__ == module.__name__
    }


def _family_module(module, level):
    """Whether an ``ImportFrom`` of ``module`` (at relative ``level``) reaches into ``core/families``."""
    parts = (module or "").split(".")
    return "families" in parts and (level > 0 or parts[0] == TOP)


def per_family_code(path):
    """``[(line, what)]``: per-family solvers, family branches and family privates in ``path``.

    A function or class whose name names a registered family (``multinomial_alpha``); a
    comparison, table or ``match`` keyed by a family (:func:`family_switches`); an
    ``isinstance`` / ``issubclass`` / ``type(...)`` test against a prior or statistics
    class (a branch on the family by the type of its pytrees); an import of a private
    module or name from ``core/families`` (``families._dirichlet``,
    ``bernoulli._outcome_counts``) or a private attribute read off a family module.
    """
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    registered = set(families.names())
    classes = _prior_and_stats_classes()
    found = [(line, f"switch: {src}") for line, src in family_switches(path)]
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if any(name in node.name.lower() for name in registered):
                found.append((node.lineno, f"per-family definition: {node.name}"))
        elif isinstance(node, ast.ImportFrom) and _family_module(node.module, node.level):
            parts = node.module.split(".")
            if any(p.startswith("_") for p in parts):
                found.append((node.lineno, f"private family module: {node.module}"))
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append((node.lineno, f"private family name: {node.module}.{alias.name}"))
                elif parts[-1] == "families" and alias.name in registered:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if "families" in parts and any(p.startswith("_") for p in parts):
                    found.append((node.lineno, f"private family module: {alias.name}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if named & classes:
                    found.append((node.lineno, f"type branch: {ast.unparse(node)}"))
        elif isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                named = {n.id for n in ast.walk(side) if isinstance(n, ast.Name)}
                named |= {n.attr for n in ast.walk(side) if isinstance(n, ast.Attribute)}
                if named & classes:
                    found.append((node.lineno, f"type branch: {ast.unparse(node)}"))
                    break
    found += [(line, f"private family name: {what}") for line, what in _private_reads(tree, modules)]
    return sorted(set(found))


def _private_reads(tree, bound):
    """``[(line, "name._attr")]``: private attributes read off the local names ``bound`` (family modules)."""
    return [
        (node.lineno, f"{node.value.id}.{node.attr}")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and isinstance(node.value, ast.Name)
        and node.value.id in bound
    ]


def test_empirical_bayes_has_no_per_family_solver_and_no_family_private():
    assert per_family_code(EMPIRICAL_BAYES) == []


@pytest.mark.parametrize(
    "source",
    [
        "def multinomial_alpha(stats):\n    return 1.0\n",
        "def gaussian_prior(stats):\n    return 1.0\n",
        "from bayesnb.core.families.bernoulli import _outcome_counts\n",
        "from bayesnb.core.families import _dirichlet\n",
        "from .families import gaussian as g\nx = g._deviation\n",
        "from bayesnb.core.priors import Beta\ndef f(prior):\n    return isinstance(prior, Beta)\n",
        "def f(prior):\n    return type(prior) is NormalInverseGamma\n",
        "def f(family):\n    if family.name == 'categorical':\n        return 1\n",
    ],
)
def test_the_per_family_finder_catches_planted_solvers(tmp_path, source):
    path = tmp_path / "planted.py"
    path.write_text(source)
    assert per_family_code(path)


def _dotted(node):
    """``"a.b.c"`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def family_private_names(path):
    """``[(line, what)]``: private names of a family module (``bernoulli._outcome_counts``) imported or read in ``path``.

    A family module is a public module of ``core/families`` (a registered family,
    ``product``, ``protocol``); the shared helpers there (``_dirichlet``, ``_rows``) are
    modules of their own, not a family's private names. Found: imports of a private
    name from a family module; private attributes read off a local name bound to a
    family module, or off a chain that ends in the families package and a family module
    (``families.gaussian._x``, ``bayesnb.core.families.gaussian._x``, ``f.gaussian._x``
    with ``f`` the package).
    """
    modules = {p.stem for p in (PACKAGE / "core" / "families").glob("*.py") if not p.stem.startswith("_")}
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    found, bound, package = [], set(), {"families"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            family = _family_module(node.module, node.level)
            last = (node.module or "").split(".")[-1]
            for alias in node.names:
                if alias.name == "families":
                    package.add(alias.asname or alias.name)
                elif family and last in modules and alias.name.startswith("_"):
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
                elif family and last == "families" and alias.name in modules:
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[-1] == "families" and alias.asname:
                    package.add(alias.asname)
                elif "families" in parts[:-1] and parts[-1] in modules and alias.asname:
                    bound.add(alias.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            chain = (_dotted(node.value) or "").split(".")
            if chain[-1] in modules and len(chain) >= 2 and chain[-2] in package:
                found.append((node.lineno, f"{'.'.join(chain)}.{node.attr}"))
    return sorted(set(found + _private_reads(tree, bound)))


def test_no_module_outside_the_families_uses_a_family_modules_private_name():
    inside = PACKAGE / "core" / "families"
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if inside not in p.parents]
    assert len(outside) > 20
    found = {str(p.relative_to(PACKAGE.parent)): hits for p in outside if (hits := family_private_names(p))}
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        "from bayesnb.core.families.bernoulli import _outcome_counts\n",
        "from .families.categorical import _pad_counts as pad\n",
        "from bayesnb.core.families import gaussian\nx = gaussian._deviation\n",
        "from ..core.families import product\nx = product._blocks\n",
        "import bayesnb.core.families.poisson as p\nx = p._rate\n",
        "from bayesnb.core import families\nx = families.gaussian._deviation\n",
        "from . import families\nx = families.bernoulli._outcome_counts\n",
        "import bayesnb.core.families.gaussian\nx = bayesnb.core.families.gaussian._deviation\n",
        "import bayesnb.core.families as f\nx = f.categorical._pad_counts\n",
    ],
)
def test_the_family_private_name_finder_catches_planted_reads(tmp_path, source):
    path = tmp_path / "planted.py"
    path.write_text(source)
    assert family_private_names(path)


def test_the_family_private_name_finder_allows_the_shared_helpers(tmp_path):
    path = tmp_path / "clean.py"
    path.write_text("from bayesnb.core.families import _dirichlet, multinomial\nx = multinomial.family\n")
    assert family_private_names(path) == []


def test_the_per_family_finder_allows_the_protocol(tmp_path):
    path = tmp_path / "clean.py"
    path.write_text(
        "from bayesnb.core.families import get, multinomial\n"
        "def learn_prior(family, prior, stats):\n"
        "    family = get(family)\n"
        "    return family.log_evidence(prior, stats), multinomial.family.tied_log_evidence\n"
    )
    assert per_family_code(path) == []


# ----------------------------------------------------------------------------- class switches


def _front_and_prior_classes():
    """Names of the estimator classes (the front and the namespace) and of the prior classes."""
    import inspect

    import bayesnb.core.priors as priors
    import bayesnb.estimators as estimators
    import bayesnb.sklearn as namespace

    front = {n for m in (estimators, namespace) for n, o in vars(m).items() if inspect.isclass(o)}
    prior = {n for n, o in vars(priors).items() if inspect.isclass(o) and o.__module__ == priors.__name__}
    return front, prior


#: The one class every estimator derives from: checking it asks "is this a bayesnb
#: estimator", the protocol, not which one.
BASE_CLASSES = {"BaseNB"}


def _defined_classes(tree):
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def _class_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def class_switches(path, front, prior, *, prior_allowed=False):
    """``[(line, source)]`` of the type tests against an estimator or prior class in ``path``.

    ``isinstance`` / ``issubclass`` (a class or a tuple of them), ``type(x) is C`` /
    ``type(x) == C``, and ``x.__name__ == "C"`` / ``__qualname__``, by bare or dotted name.
    A module may test for the classes it defines itself and for ``BaseNB``; the front
    (``prior_allowed``) may also test the priors a user passes in.
    """
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    own = _defined_classes(tree) | BASE_CLASSES
    names = (front | (set() if prior_allowed else prior)) - own
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _class_name(node.func) in ("isinstance", "issubclass") and len(node.args) == 2:
            kinds = node.args[1].elts if isinstance(node.args[1], (ast.Tuple, ast.List, ast.Set)) else [node.args[1]]
            if any(_class_name(k) in names for k in kinds):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            typed = any(isinstance(o, ast.Call) and _class_name(o.func) == "type" for o in operands)
            if typed and any(_class_name(o) in names for o in operands):
                found.append((node.lineno, ast.unparse(node)))
            named = any(isinstance(o, ast.Attribute) and o.attr in ("__name__", "__qualname__") for o in operands)
            if named and any(isinstance(o, ast.Constant) and o.value in names for o in operands):
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_layer_tests_for_an_estimator_or_prior_class():
    front, prior = _front_and_prior_classes()
    assert {"MultinomialNB", "MixedNB", "PolyaNB"} <= front and {"Dirichlet", "Gamma", "NormalInverseWishart"} <= prior
    families_dir = PACKAGE / "core" / "families"
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if families_dir in path.parents or parts in (("core", "priors.py"), ("core", "class_prior.py")):
            continue  # the families own their priors; class_prior owns the Dirichlet on the proportions
        hits = class_switches(path, front, prior, prior_allowed=set(FRONT) & set(parts) != set())
        if hits:
            found[str(path.relative_to(PACKAGE.parent))] = hits
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        "def f(est):\n    return isinstance(est, MultinomialNB)\n",
        "import bayesnb\ndef f(est):\n    return isinstance(est, (int, bayesnb.PolyaNB))\n",
        "def f(cls):\n    return issubclass(cls, MixedNB)\n",
        "def f(est):\n    return type(est) is GaussianNB\n",
        "def f(est):\n    return type(est).__name__ == 'CategoricalNB'\n",
        "def f(prior):\n    return isinstance(prior, Dirichlet)\n",
        "from bayesnb.core import priors\ndef f(prior):\n    return type(prior) == priors.NormalInverseGamma\n",
    ],
)
def test_the_class_switch_finder_catches_planted_tests(tmp_path, source):
    front, prior = _front_and_prior_classes()
    path = tmp_path / "planted.py"
    path.write_text(source)
    assert class_switches(path, front, prior)


def test_the_class_switch_finder_allows_the_base_own_classes_and_the_front_priors(tmp_path):
    front, prior = _front_and_prior_classes()
    path = tmp_path / "clean.py"
    path.write_text(
        "class MixedNB:\n    pass\n"
        "def f(est, prior):\n"
        "    return isinstance(est, BaseNB) and not isinstance(est, MixedNB), isinstance(prior, Gamma)\n"
    )
    assert class_switches(path, front, prior, prior_allowed=True) == []
    assert class_switches(path, front, prior) == [(4, "isinstance(prior, Gamma)")]
