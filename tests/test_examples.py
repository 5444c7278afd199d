"""Every ``examples/*.py`` runs with ``--quick`` (the examples contract in the developers' notes).

Each example is a script with ``main(argv=None)``, a ``--quick`` flag and an ``--out``
directory; the ones reading ``../shared/data`` exit 0 with a "skipped: ... not found"
message when it is absent. This file discovers the scripts, so examples added on other
branches are run too once merged.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
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


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_quick(script, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, str(script), "--quick", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, f"{script.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert "Traceback" not in proc.stderr
    assert proc.stdout.strip(), f"{script.name} printed nothing"
    if "skipped:" in proc.stdout:
        assert "not found" in proc.stdout
        return
    # What an example writes under --out are real figures.
    for png in (tmp_path / "out").glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, png.name
    # The working directory is left clean: outputs go to --out only.
    assert sorted(p.name for p in tmp_path.iterdir()) in (["out"], [])
