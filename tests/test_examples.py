"""Every ``examples/*.py`` runs with ``--quick`` (the examples contract in the developers' notes).

Each example is a script with ``main(argv=None)``, a ``--quick`` flag and an ``--out``
directory; the ones reading ``../shared/data`` exit 0 with a "skipped: ... not found"
message when it is absent. This file discovers the scripts, so examples added on other
branches are run too once merged.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_there_are_examples():
    names = {p.name for p in EXAMPLES}
    assert {"spam_uncertainty.py", "small_data_estimates.py", "gaussian_boundaries.py"} <= names


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_follows_the_contract(script):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    assert mains, f"{script.name} has no main()"
    args = mains[0].args
    assert [a.arg for a in args.args] == ["argv"] and len(args.defaults) == 1
    assert isinstance(args.defaults[0], ast.Constant) and args.defaults[0].value is None
    assert ast.get_docstring(tree), f"{script.name} has no module docstring saying what it shows"
    source = script.read_text(encoding="utf-8")
    assert "--quick" in source and "--out" in source
    assert 'if __name__ == "__main__":' in source


def _docs_tool():
    spec = importlib.util.spec_from_file_location("_bayesnb_docs_for_examples", ROOT / "tools" / "docs" / "bayesnb_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def docs_invocations():
    """The arguments each example is run with by its tutorial page, by script name.

    Read by the documentation tool's own reader of executed blocks (the one the build
    uses to start the examples; tests/test_docs.py tests it).
    """
    read = _docs_tool().example_calls
    found = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for name, args, _ in read(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(args)
    return found


def test_every_example_page_writes_its_figures_under_an_out_folder():
    # One invocation per example, with --out, so the run below is the page's run and
    # the contract "outputs go to --out only" is checked on it.
    invocations = docs_invocations()
    assert sorted(invocations) == sorted(p.stem for p in EXAMPLES)
    for name, calls in invocations.items():
        assert len(calls) == 1, f"{name} is run {len(calls)} times by the documentation"
        args = calls[0]
        assert "--out" in args and args[args.index("--out") + 1] == "figures", (name, args)


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_quick(script):
    # Run the way its tutorial page runs it (bayesnb_docs.run: a fresh interpreter,
    # --quick, the page's arguments), so that with BAYESNB_DOCS_CACHE set (as .ci/run
    # does) the documentation build shows this very run instead of repeating it.
    docs = _docs_tool()
    args = docs_invocations().get(script.stem, [("--out", "figures")])[0]
    result = docs.run(script, *args, quick=True)  # raises ExampleError on a failed run
    assert "Traceback" not in result["stderr"]
    assert result["stdout"].strip(), f"{script.name} printed nothing"
    if "skipped:" in result["stdout"]:
        assert "not found" in result["stdout"]
        return
    # What an example writes under --out are real figures.
    for fname, kind, data in result["figures"]:
        assert kind != "image/png" or (data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000), fname
    # The working directory is left clean: outputs go to --out only.
    assert result["work_entries"] in (["figures"], [])
