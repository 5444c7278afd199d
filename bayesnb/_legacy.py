"""The module names of bayesnb's flat layout, kept importable after the move into layers.

Until version 0.3 every module sat directly in ``bayesnb/`` (``bayesnb.uncertainty``,
``bayesnb.families.multinomial``, ...). The package is now laid out by layer (``core``,
``ppl``, ``analysis``, ``io``, ``scale``, ``cli``); user code, notebooks and pickles that
name the old modules keep working, because an old name imports *the same module object*
as its new one (so ``monkeypatch`` and ``isinstance`` see one module, and a family is
registered once). Nothing inside bayesnb uses an old name (``tests/test_architecture.py``).

The aliasing is a :data:`sys.meta_path` finder placed before the path-based finder: an old
name must not be found on disk under its new folder a second time (``bayesnb.families``
resolves to ``bayesnb/core/families/``, whose files would otherwise load again as
``bayesnb.families.multinomial``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: Old public module (or package) -> its module in the layered layout.
MOVED = {
    "bayesnb.families": "bayesnb.core.families",
    "bayesnb.stats": "bayesnb.core.stats",
    "bayesnb.priors": "bayesnb.core.priors",
    "bayesnb.missing": "bayesnb.core.missing",
    "bayesnb.class_prior": "bayesnb.core.class_prior",
    "bayesnb.empirical_bayes": "bayesnb.core.empirical_bayes",
    "bayesnb.models": "bayesnb.ppl.models",
    "bayesnb.mcmc": "bayesnb.ppl.mcmc",
    "bayesnb.sbc": "bayesnb.ppl.sbc",
    "bayesnb.export": "bayesnb.ppl.export",
    "bayesnb.uncertainty": "bayesnb.analysis.uncertainty",
    "bayesnb.comparison": "bayesnb.analysis.comparison",
    "bayesnb.evidence": "bayesnb.analysis.evidence",
    "bayesnb.plots": "bayesnb.analysis.plots",
    "bayesnb.persistence": "bayesnb.io.persistence",
    "bayesnb.datasets": "bayesnb.io.datasets",
    "bayesnb.distributed": "bayesnb.scale.distributed",
    "bayesnb.streaming": "bayesnb.scale.streaming",
}


def new_name(name):
    """The layered module for an old dotted module name, or None if it did not move.

    >>> new_name("bayesnb.families.poisson")
    'bayesnb.core.families.poisson'
    >>> new_name("bayesnb.estimators") is None
    True
    """
    parts = name.split(".")
    for i in range(len(parts), 1, -1):
        old = ".".join(parts[:i])
        if old in MOVED:
            return ".".join([MOVED[old], *parts[i:]])
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old name as the already-importable new module (never a second copy)."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return None  # the default (empty) module; exec_module swaps it out

    def exec_module(self, module):
        # importlib returns whatever sys.modules holds for the name after exec_module,
        # so the old name becomes the new module itself and its __spec__ stays its own.
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("bayesnb."):
            return None
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install():
    """Put the alias finder first on :data:`sys.meta_path` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def module(name):
    """``bayesnb.<name>`` for an old top-level module name (for ``bayesnb.__getattr__``)."""
    if f"bayesnb.{name}" not in MOVED:
        raise AttributeError(name)
    return importlib.import_module(f"bayesnb.{name}")
