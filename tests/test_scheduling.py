"""tests/_scheduling.py: which tests share a worker, checked on a real two-worker run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _scheduling import deal_order, is_slow, scope_of, slow_test_names, source_shares_work

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


@pytest.mark.parametrize(
    ("source", "slow"),
    [
        ("import pytest\n@pytest.mark.slow\ndef test_a():\n    pass\ndef test_b():\n    pass\n", {"test_a"}),
        ("from pytest import mark\n@mark.slow\n@mark.parametrize('i', [1])\ndef test_a(i):\n    pass\n", {"test_a"}),
        ("import pytest\n@pytest.mark.slow\nclass TestA:\n    def test_a(self):\n        pass\n", {"test_a"}),
        ("import pytest\nclass TestA:\n    @pytest.mark.slow\n    def test_a(self):\n        pass\n"
         "    def test_b(self):\n        pass\n", {"test_a"}),
        ("import pytest\npytestmark = pytest.mark.slow\ndef test_a():\n    pass\n", {"*"}),
        ("import pytest\npytestmark = [pytest.mark.filterwarnings('x'), pytest.mark.slow]\n", {"*"}),
        ("import pytest\n@pytest.mark.skip\ndef test_a():\n    pass\n", set()),
        ("import pytest\nslow = pytest.mark.skip\n@slow\ndef test_a():\n    pass\n", set()),
    ],
)
def test_which_tests_are_marked_slow(source, slow):
    assert slow_test_names(source) == slow


def test_files_go_first_then_slow_tests_then_the_rest(tmp_path):
    (tmp_path / "test_a.py").write_text("import pytest\n@pytest.mark.slow\ndef test_s(i):\n    pass\n")
    (tmp_path / "test_b.py").write_text("import pytest\npytestmark = pytest.mark.slow\n")
    units = [("test_shared.py", {}), ("test_a.py::test_x", {}), ("test_a.py::test_s[1]", {}), ("test_c.py::test_y", {}),
             ("test_b.py::Test::test_z", {}), ("test_a.py::test_s[2]", {})]
    assert is_slow("test_a.py::test_s[1]", tmp_path) and not is_slow("test_a.py::test_x", tmp_path)
    assert [scope for scope, _ in deal_order(units, tmp_path)] == [
        "test_shared.py", "test_a.py::test_s[1]", "test_b.py::Test::test_z", "test_a.py::test_s[2]",
        "test_a.py::test_x", "test_c.py::test_y",
    ]


_LAST_AND_SLOW = """
import os, pytest

@pytest.mark.slow
def test_slow():
    with open(os.environ["ORDER"], "a") as f:
        f.write("slow\\n")
"""


def test_a_two_worker_run_starts_a_slow_test_collected_last_early(tmp_path):
    # test_z_slow.py is collected after the 40 plain tests; xdist alone would deal it last.
    plain = textwrap.dedent(_PLAIN).replace('os.environ["WORKERS"]', 'os.environ["ORDER"]').replace(
        'os.environ.get("PYTEST_XDIST_WORKER", "none") + "\\n"', '"plain\\n"')
    for name, text in (("test_plain.py", plain), ("test_z_slow.py", textwrap.dedent(_LAST_AND_SLOW)),
                       ("conftest.py", textwrap.dedent(_CONFTEST))):
        (tmp_path / name).write_text(text)
    order = tmp_path / "order.txt"
    env = {"ORDER": str(order), "PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "xdist", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "-c", "/dev/null", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = order.read_text().split()
    assert len(lines) == 41 and lines.index("slow") < 8, lines
