"""The README's commands and code are what CI and users run: keep them honest."""

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_opens_with_exactly_two_commands():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(first_block) == 2
    assert "bayesnb demo" in first_block[0]
    assert "pytest" in first_block[1] and ".[test]" in first_block[1]
    assert README.index("```bash") < README.index("\n## ")


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "sed -n 2p" in ci and "README.md" in ci


def test_readme_python_example_runs():
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    clf, X_new = namespace["clf"], namespace["X_new"]
    lo, hi = clf.predict_proba_interval(X_new, level=0.9, random_state=0)
    assert np.all(lo <= hi)
    assert np.isfinite(clf.log_evidence())
