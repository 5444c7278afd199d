"""``import bayesnb`` and ``bayesnb --help`` stay light: no JAX, NumPy or scikit-learn.

Each check runs in a fresh interpreter (``sys.modules`` of this one already holds
everything), and is planted-failure tested: the same probe reports JAX once a public name
is touched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("jax", "numpy", "scipy", "sklearn", "numpyro", "pandas", "matplotlib")


def _heavy_after(code):
    probe = code + f"\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_import_and_help_import_nothing_heavy():
    code = (
        "import contextlib, io, sys, bayesnb\n"
        "from bayesnb.cli import main\n"
        "for argv in (['--help'], ['fit', '--help'], ['predict', '--help'], ['compare', '--help'],\n"
        "             ['crosscheck', '--help'], ['demo', '--help'], ['--version']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(argv) == 0, argv\n"
        "assert bayesnb.__version__\n"
    )
    assert _heavy_after(code) == "[]"


def test_lazy_names_are_the_modules_own():
    import bayesnb
    import bayesnb.estimators
    from bayesnb import MultinomialNB, load
    from bayesnb.analysis.comparison import compare
    from bayesnb.io import persistence

    assert MultinomialNB is bayesnb.estimators.MultinomialNB
    assert load is persistence.load and bayesnb.compare is compare
    assert set(bayesnb.__all__) <= set(dir(bayesnb))
    assert {"estimators", "core", "families", "plots", "distributed"} <= set(dir(bayesnb))
    assert bayesnb.families is sys.modules["bayesnb.core.families"]
    for name in bayesnb.__all__:
        assert getattr(bayesnb, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'uncertainty'"):
        bayesnb.uncertainty  # noqa: B018 (a flat-layout name of a layout never released)


def test_load_imports_the_estimators_first(monkeypatch):
    # bayesnb.load finds estimator classes in the table that importing the estimators
    # (and the scikit-learn namespace's) fills; a fresh `import bayesnb` has not
    # imported them, so the lazy `load` does.
    from bayesnb.io.persistence import load

    imported = _imports_of_first_access(monkeypatch, "load")
    assert imported == (load, ["bayesnb.estimators", "bayesnb.sklearn", "bayesnb.io.persistence"])


def test_the_cli_copies_of_constants_match_their_modules():
    from bayesnb.cli import command
    from bayesnb.core._validation import ESTIMATES
    from bayesnb.io import datasets
    from bayesnb.ppl import mcmc

    assert command.ESTIMATES == ESTIMATES
    assert (command.MAX_ROWS, command.MAX_BYTES) == (datasets.MAX_ROWS, datasets.MAX_BYTES)
    assert (command.NUM_CHAINS, command.FALSE_ALARM) == (mcmc.NUM_CHAINS, mcmc.FALSE_ALARM)


def test_a_wrong_family_lists_the_registered_ones(capsys):
    from bayesnb.cli import main
    from bayesnb.core import families

    assert main(["fit", "x.csv", "--model", "m.npz", "--family", "nonesuch"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nonesuch'" in err
    for name in families.names():
        assert name in err


def test_the_selector_imports_the_estimators_first(monkeypatch):
    # BayesFactorSelector's default estimator is looked up in the same class table
    # ("no estimator class 'BernoulliNB' is registered" in a fresh process before).
    from bayesnb.analysis.evidence import BayesFactorSelector

    imported = _imports_of_first_access(monkeypatch, "BayesFactorSelector")
    assert imported == (BayesFactorSelector, ["bayesnb.estimators", "bayesnb.analysis.evidence"])


def _imports_of_first_access(monkeypatch, name):
    """``(bayesnb.<name>, the modules bayesnb imported to give it)``, as on first access."""
    import importlib

    import bayesnb

    imported = []
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda module: imported.append(module) or real(module))
    monkeypatch.delitem(vars(bayesnb), name, raising=False)
    return getattr(bayesnb, name), imported
