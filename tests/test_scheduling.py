"""tests/_scheduling.py: which tests share a worker, checked on a real two-worker run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _scheduling import scope_of, source_shares_work

_HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    ("source", "shares"),
    [
        ("import pytest\n@pytest.fixture(scope='module')\ndef f():\n    return 1\n", True),
        ("from pytest import fixture\n@fixture(scope='session')\ndef f():\n    return 1\n", True),
        ("import pytest\nclass T:\n    @pytest.fixture(scope='class')\n    def f(self):\n        return 1\n", True),
        ("import pytest\nS = 'module'\n@pytest.fixture(scope=S)\ndef f():\n    return 1\n", True),
        ("import functools\n@functools.lru_cache(maxsize=None)\ndef run(seed):\n    return seed\n", True),
        ("from functools import cache\n@cache\ndef run(seed):\n    return seed\n", True),
        ("import pytest\n@pytest.fixture\ndef f():\n    return 1\n", False),
        ("import pytest\n@pytest.fixture(scope='function')\ndef f():\n    return 1\n", False),
        ("import pytest\n@pytest.mark.parametrize('a', [1])\ndef test_a(a):\n    pass\n", False),
    ],
)
def test_what_counts_as_shared_work(source, shares):
    assert source_shares_work(source) is shares


def test_scope_is_the_file_only_where_the_file_shares_work(tmp_path):
    (tmp_path / "test_shared.py").write_text("import pytest\n@pytest.fixture(scope='module')\ndef f():\n    return 1\n")
    (tmp_path / "test_plain.py").write_text("def test_a():\n    pass\n")
    assert scope_of("test_shared.py::test_a[1]", tmp_path) == "test_shared.py"
    assert scope_of("test_plain.py::test_a[1]", tmp_path) == "test_plain.py::test_a[1]"
    assert scope_of("README.md::README.md", tmp_path) == "README.md::README.md"  # not Python


_SHARED = """
import os, pytest

@pytest.fixture(scope="module")
def expensive():
    with open(os.environ["SETUPS"], "a") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "none") + "\\n")
    return 1

@pytest.mark.parametrize("i", range(6))
def test_shared(expensive, i):
    pass
"""

_PLAIN = """
import os, time, pytest

@pytest.mark.parametrize("i", range(40))
def test_plain(i):
    time.sleep(0.02)
    with open(os.environ["WORKERS"], "a") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "none") + "\\n")
"""

_CONFTEST = f"""
import sys
import pytest
sys.path.insert(0, {str(_HERE)!r})
from _scheduling import make_scheduler

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") == "loadgroup":
        return make_scheduler(config, log)
"""


def _run(tmp_path, dist):
    for name, text in (("test_shared.py", _SHARED), ("test_plain.py", _PLAIN), ("conftest.py", _CONFTEST)):
        (tmp_path / name).write_text(textwrap.dedent(text))
    setups, workers = tmp_path / "setups.txt", tmp_path / "workers.txt"
    for f in (setups, workers):
        f.unlink(missing_ok=True)
    # Only xdist among the installed plugins: a bare pytest per run, seconds each.
    env = {"SETUPS": str(setups), "WORKERS": str(workers), "PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "xdist", "-p", "no:cacheprovider", "-n", "2", "--dist", dist, "-c", "/dev/null",
         "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return setups.read_text().split(), workers.read_text().split()


def test_a_two_worker_run_keeps_shared_work_together_and_spreads_the_rest(tmp_path):
    setups, workers = _run(tmp_path, "loadgroup")
    assert len(setups) == 1  # the module fixture ran once: its six tests on one worker
    assert set(workers) == {"gw0", "gw1"}  # the plain file's tests went to both workers


def test_the_oracle_runs_show_what_each_of_xdist_s_own_modes_does(tmp_path):
    # The property above is not automatic: test by test, the fixture runs on both
    # workers; file by file, the plain file's tests stay on one.
    setups, _ = _run(tmp_path, "load")
    assert len(setups) == 2
    _, workers = _run(tmp_path, "loadfile")
    assert len(set(workers)) == 1
