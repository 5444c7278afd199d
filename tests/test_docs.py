"""The documentation site's promises that a test can hold without building it.

``mkdocs build --strict`` (run by .ci/run after the tests) fails on a broken reference,
a page missing from the navigation or a failing executed block. What the build cannot
see is checked here: that every public name is on an API page, that its docstring has
the numpydoc sections a reader needs, that every example script has a tutorial page,
and that the machinery of the executed pages and of the docstring conversion does what
it says.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

import bayesnb

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TOOLS = ROOT / "tools" / "docs"

# ``::: dotted.path`` directives of mkdocstrings, at the start of a line.
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.M)
SECTION = re.compile(r"^[ \t]*([A-Z][A-Za-z ]+)\n[ \t]*-{3,}[ \t]*$", re.M)


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(f"_docs_tool_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _resolve(path):
    """The object a ``:::`` directive names (module, or attribute of a module)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def _api_pages():
    return sorted((DOCS / "api").glob("*.md"))


def _documented_objects():
    """Objects rendered by the API pages: each directive's object and, for a module, its __all__."""
    found = []
    for page in _api_pages():
        for path in DIRECTIVE.findall(page.read_text()):
            obj = _resolve(path)
            found.append(obj)
            if inspect.ismodule(obj):
                found += [getattr(obj, name) for name in getattr(obj, "__all__", [])]
    return found


def _sections(doc):
    return set(SECTION.findall(inspect.cleandoc(doc or "")))


def _own_public_methods(cls):
    """Public methods a bayesnb class defines or inherits from bayesnb (not from scikit-learn)."""
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or isinstance(inspect.getattr_static(cls, name), property):
            continue
        if callable(member) and getattr(member, "__module__", "").startswith("bayesnb"):
            yield name, member


def _takes_parameters(func):
    params = [
        p
        for p in inspect.signature(func).parameters.values()
        if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return bool(params)


def _missing_sections(obj, qualname):
    """Numpydoc sections a public object's docstring lacks, as readable strings."""
    missing = []
    if inspect.isclass(obj):
        sections = _sections(obj.__doc__)
        if "Examples" not in sections:
            missing.append(f"{qualname}: no Examples section")
        own_init = "__init__" in vars(obj) or any(
            "__init__" in vars(base) and base.__module__.startswith("bayesnb") for base in obj.__mro__[1:]
        )
        if own_init and _takes_parameters(obj) and "Parameters" not in sections:
            missing.append(f"{qualname}: takes parameters but has no Parameters section")
        for name, method in _own_public_methods(obj):
            msections = _sections(method.__doc__)
            if "Returns" not in msections and "Yields" not in msections:
                missing.append(f"{qualname}.{name}: no Returns section")
            if _takes_parameters(method) and "Parameters" not in msections:
                missing.append(f"{qualname}.{name}: takes parameters but has no Parameters section")
    elif callable(obj):
        sections = _sections(obj.__doc__)
        for section in ("Returns", "Examples"):
            if section not in sections:
                missing.append(f"{qualname}: no {section} section")
        if _takes_parameters(obj) and "Parameters" not in sections:
            missing.append(f"{qualname}: takes parameters but has no Parameters section")
    return missing


def test_every_public_name_is_in_the_api_reference():
    documented = _documented_objects()
    text = "\n".join(page.read_text() for page in _api_pages())
    missing = []
    for name in bayesnb.__all__:
        obj = getattr(bayesnb, name)
        if callable(obj) or inspect.ismodule(obj):
            if not any(obj is d for d in documented):
                missing.append(name)
        elif f"bayesnb.{name}" not in text:
            missing.append(name)
    assert not missing, f"public names with no API page (add a '::: bayesnb.NAME' directive): {missing}"


def test_every_directive_names_an_importable_object():
    for page in _api_pages():
        for path in DIRECTIVE.findall(page.read_text()):
            _resolve(path)  # raises if the page names something that does not exist


def test_public_docstrings_have_parameters_returns_and_examples():
    problems = []
    for name in bayesnb.__all__:
        obj = getattr(bayesnb, name)
        if callable(obj):
            problems += _missing_sections(obj, f"bayesnb.{name}")
    assert not problems, "numpydoc sections missing:\n" + "\n".join(problems)


def test_section_check_catches_a_bare_docstring():
    # The check above must be able to fail: a function and a class with thin docstrings.
    def f(x):
        """Only a summary."""

    class C:
        """Summary.

        Parameters
        ----------
        a : int
        """

        def __init__(self, a=1):
            self.a = a

        def go(self, n):
            """Go.

            Returns
            -------
            None
            """

    C.__module__ = C.go.__module__ = "bayesnb._fake"
    assert set(_missing_sections(f, "f")) == {
        "f: no Returns section",
        "f: no Examples section",
        "f: takes parameters but has no Parameters section",
    }
    assert set(_missing_sections(C, "C")) == {
        "C: no Examples section",
        "C.go: takes parameters but has no Parameters section",
    }


def _executed_blocks(markdown):
    """Code of the blocks markdown-exec runs (not those quoted inside a longer fence)."""
    return _load_tool("bayesnb_docs").executed_blocks(markdown)


def test_every_example_has_a_tutorial_page():
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
    code = "\n".join(b for p in (DOCS / "tutorials").glob("*.md") for b in _executed_blocks(p.read_text()))
    run = set(re.findall(r"""\bexample\(\s*["']([\w-]+)["']""", code))
    missing = [name for name in examples if name not in run]
    assert not missing, (
        f"examples without a tutorial page that runs them: {missing} "
        "(see docs/tutorials/index.md: a page with `print(example(NAME))` in an executed block)"
    )


def test_quoted_blocks_do_not_count_as_executed():
    page = (DOCS / "tutorials" / "index.md").read_text()
    assert 'print(example("spam_uncertainty"))' in page  # shown as a template only
    assert _executed_blocks(page) == []
    quick = _executed_blocks((DOCS / "tutorials" / "quickstart.md").read_text())
    assert quick and "load_digits_counts" in quick[0]


def test_ci_builds_the_docs_strict():
    ci = (ROOT / ".ci" / "run").read_text()
    build = [line for line in ci.splitlines() if "-m mkdocs build" in line and not line.lstrip().startswith("#")]
    assert len(build) == 1 and "--strict" in build[0]
    # `mkdocs build -q --strict` exits 0 on a failing tutorial: quiet mode stops the
    # warning count that --strict relies on.
    assert not re.search(r"\s(-q|--quiet)\b", build[0])
    assert "strict: true" in (ROOT / "mkdocs.yml").read_text()


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")]
    assert pages
    assert [p for p in pages if p not in nav] == []


# ---------------------------------------------------------------- executed pages


def _write_example(tmp_path, body):
    path = tmp_path / "demo_example.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_example_runner_shows_output_and_figures(tmp_path):
    docs_tools = _load_tool("bayesnb_docs")
    script = _write_example(
        tmp_path,
        """
        import argparse

        def main(argv=None):
            args = argparse.ArgumentParser()
            args.add_argument("--quick", action="store_true")
            args.add_argument("--n", type=int, default=3)
            a = args.parse_args(argv)
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots()
            ax.plot(range(a.n))
            fig2, ax2 = plt.subplots()
            ax2.plot([1, 0])
            fig2.savefig("saved.png")
            plt.close(fig2)
            print(f"quick={a.quick} n={a.n}")
            return 0
        """,
    )
    md = docs_tools.example(script, "--n", "5")
    assert "quick=True n=5" in md
    assert "--quick --n 5" in md
    # One figure left open, one written to a file: both shown, inlined.
    assert md.count("data:image/png;base64,") == 2
    assert "saved.png" in md
    assert 'def main(argv=None)' in md  # the source, in a collapsed block


def test_example_runner_flags_a_run_without_its_data(tmp_path):
    docs_tools = _load_tool("bayesnb_docs")
    script = _write_example(
        tmp_path,
        """
        def main(argv=None):
            print("skipped: /nowhere/corpus.tar.gz not found (the corpus lives in ../shared/data)")
            return 0
        """,
    )
    md = docs_tools.example(script)
    notice, _, rest = md.partition("$ python")
    assert notice.lstrip().startswith('!!! warning "Not run on this build: data not found"')
    assert "skipped: /nowhere/corpus.tar.gz not found" in notice
    # A run that found its data gets no notice.
    assert docs_tools.skip_notice("20 Newsgroups: 4 groups\naccuracy 0.9") == ""
    assert "SMS part skipped" in docs_tools.skip_notice("(SMS part skipped: /x/SMSSpamCollection not found)")


@pytest.mark.parametrize(
    "body, message",
    [
        ("def main(argv=None):\n    raise RuntimeError('boom')\n", "boom"),
        ("def main(argv=None):\n    return 3\n", "exit status 3"),
        ("import sys\ndef main(argv=None):\n    sys.exit('bad data')\n", "bad data"),
        ("x = 1\n", "no main(argv)"),
    ],
)
def test_example_runner_fails_loudly(tmp_path, body, message):
    docs_tools = _load_tool("bayesnb_docs")
    script = _write_example(tmp_path, body)
    with pytest.raises(docs_tools.ExampleError, match=re.escape(message)):
        docs_tools.example(script)


# ---------------------------------------------------------------- docstring conversion


@pytest.fixture(scope="module")
def rst():
    pytest.importorskip("griffe", reason="the docs extra (griffe) is not installed")
    return _load_tool("griffe_rst")


def test_math_roles_and_blocks_become_arithmatex(rst):
    text = "Mean :math:`a / b`, then\n\n.. math::\n\n    x = 1\n    + y\n\nafter."
    assert rst.to_markdown(text) == "Mean \\(a / b\\), then\n\n$$\nx = 1\n+ y\n$$\n\nafter."
    inline = "Text.\n\n  .. math:: \\sum_j x_j\n\nMore."
    assert rst.to_markdown(inline) == "Text.\n\n  $$\n  \\sum_j x_j\n  $$\n\nMore."


def test_cross_reference_roles(rst):
    import griffe

    loader = griffe.GriffeLoader()
    loader.load("bayesnb.core.priors")
    collection = loader.modules_collection
    obj = collection["bayesnb.core.priors.beta_from_alpha"]
    out = rst.to_markdown(
        ":class:`~bayesnb.core.priors.Dirichlet`, :class:`Beta`, :func:`bayesnb.core._x64.x64`, :class:`ValueError`",
        obj,
        collection,
    )
    # Public targets become autorefs links (relative ones resolved from the module),
    # private and foreign ones code spans.
    assert out == "[`Dirichlet`][bayesnb.core.priors.Dirichlet], [`Beta`][bayesnb.core.priors.Beta], `bayesnb.core._x64.x64()`, `ValueError`"
    # In a numpydoc "name : type" line the type stays plain text.
    assert rst.to_markdown("prior : :class:`bayesnb.core.priors.Beta`", obj, collection) == "prior : bayesnb.core.priors.Beta"



def test_rst_bullet_items_keep_their_blocks(rst):
    text = "* one\n  more\n\n  .. math:: x\n\n  after\n* two\n  cont"
    assert rst.to_markdown(text) == "* one\n    more\n\n    $$\n    x\n    $$\n\n    after\n\n* two\n    cont"


def test_choice_type_without_default_is_not_shown_with_one(rst):
    import griffe

    loader = griffe.GriffeLoader()
    loader.load("bayesnb.core.class_prior")
    obj = loader.modules_collection["bayesnb.core.class_prior.point_log"]  # kind has no default
    line = 'kind : {"mle", "map", "mean", "predictive"}'
    assert rst.to_markdown(line, obj) == 'kind : one of {"mle", "map", "mean", "predictive"}'
    est = "estimate : {\"predictive\", \"mean\"}, default=\"predictive\""
    assert rst.to_markdown(est, obj) == est


def test_return_types_are_plain_text(rst):
    text = "Summary.\n\nReturns\n-------\nndarray, in the order of ``classes_``\n    Described with ``code``."
    assert rst.to_markdown(text) == (
        "Summary.\n\nReturns\n-------\nndarray, in the order of classes_\n    Described with ``code``."
    )


def test_example_runs_are_cached_by_everything_that_decides_them(tmp_path, monkeypatch):
    # BAYESNB_DOCS_CACHE: the test suite's run of an example is the one the build shows.
    docs_tools = _load_tool("bayesnb_docs")
    cache = tmp_path / "cache"
    monkeypatch.setenv("BAYESNB_DOCS_CACHE", str(cache))
    script = _write_example(
        tmp_path,
        """
        import sys, time

        def main(argv=None):
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots()
            ax.plot([0, 1])
            print("ran at", time.time_ns(), "with", " ".join(argv))
            return 0
        """,
    )
    first = docs_tools.run(script, "--n", "5")
    assert first["cached"] is False and len(list(cache.glob("*.json"))) == 1
    again = docs_tools.run(script, "--n", "5")
    # Read back, not run again: the same timestamp, the same figure bytes.
    assert again["cached"] is True
    assert again["stdout"] == first["stdout"] and again["figures"] == first["figures"]
    assert "read back from the build's cache" in docs_tools.example(script, "--n", "5")
    # Where compiled programs are kept, and the size limit that locks the folder the test
    # processes share (tests/conftest.py), decide nothing: the documentation build, which
    # keeps its programs elsewhere without a limit, reads back the test suite's runs.
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("JAX_COMPILATION_CACHE_MAX_SIZE", raising=False)
    assert docs_tools.run(script, "--n", "5")["cached"] is True
    monkeypatch.setenv("JAX_COMPILATION_CACHE_MAX_SIZE", str(1 << 30))
    assert docs_tools.run(script, "--n", "5")["cached"] is True
    # Other arguments, another script text or another environment for XLA: a new run.
    assert docs_tools.run(script, "--n", "6")["stdout"] != first["stdout"]
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert docs_tools.run(script, "--n", "5")["cached"] is False
    monkeypatch.delenv("XLA_FLAGS")
    script.write_text(script.read_text() + "\n# edited\n")
    assert docs_tools.run(script, "--n", "5")["cached"] is False
    # Without the variable nothing is read or written.
    monkeypatch.delenv("BAYESNB_DOCS_CACHE")
    before = sorted(cache.iterdir())
    assert docs_tools.run(script, "--n", "5")["cached"] is False
    assert sorted(cache.iterdir()) == before


def test_a_failed_example_run_is_never_cached(tmp_path, monkeypatch):
    docs_tools = _load_tool("bayesnb_docs")
    cache = tmp_path / "cache"
    monkeypatch.setenv("BAYESNB_DOCS_CACHE", str(cache))
    script = _write_example(tmp_path, "def main(argv=None):\n    raise RuntimeError('boom')\n")
    for _ in range(2):
        with pytest.raises(docs_tools.ExampleError, match="boom"):
            docs_tools.run(script)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_corrupt_cache_entry_is_run_again(tmp_path, monkeypatch):
    docs_tools = _load_tool("bayesnb_docs")
    cache = tmp_path / "cache"
    monkeypatch.setenv("BAYESNB_DOCS_CACHE", str(cache))
    script = _write_example(tmp_path, "def main(argv=None):\n    print('hello')\n    return 0\n")
    docs_tools.run(script)
    (entry,) = cache.glob("*.json")
    entry.write_text("{not json")
    result = docs_tools.run(script)
    assert result["cached"] is False and result["stdout"] == "hello\n"


# ---------------------------------------------------------------- examples started ahead of their pages


def test_the_example_calls_of_a_page_are_read_from_its_executed_blocks():
    docs_tools = _load_tool("bayesnb_docs")
    page = textwrap.dedent(
        """
        ````markdown
        ```python exec="on"
        print(example("shown_only"))
        ```
        ````

        ```python exec="on"
        from bayesnb_docs import example
        print(example("ran", "--out", "figures", quick=False))
        print(example(name_computed_at_run_time))
        ```

        ```python
        print(example("not_executed"))
        ```
        """
    )
    assert docs_tools.example_calls(page) == [("ran", ("--out", "figures"), {"quick": False})]
    # Every tutorial page's example is found, once each (the build starts them all).
    calls = [c for page in sorted(DOCS.rglob("*.md")) for c in docs_tools.example_calls(page.read_text())]
    names = sorted(name for name, _, _ in calls)
    assert names == sorted(p.stem for p in (ROOT / "examples").glob("*.py"))


_MEETS = """
import sys, time
from pathlib import Path

def main(argv=None):
    # Waits (up to 60 s) for the other script to have started: passes only when both run at once.
    here, other = Path(argv[-2]), Path(argv[-1])  # after --quick
    with open(here.with_suffix(".count"), "a") as f:
        f.write("run\\n")
    here.touch()
    deadline = time.monotonic() + 60
    while not other.exists():
        if time.monotonic() > deadline:
            sys.exit(f"{other.name} never started beside {here.name}")
        time.sleep(0.05)
    print(f"{here.stem} met {other.stem}")
    return 0
"""


def test_started_runs_run_at_once_and_each_page_gets_its_own(tmp_path, monkeypatch):
    docs_tools = _load_tool("bayesnb_docs")
    monkeypatch.delenv("BAYESNB_DOCS_CACHE", raising=False)
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    script = _write_example(tmp_path, _MEETS)
    a, b = str(tmp_path / "a.flag"), str(tmp_path / "b.flag")
    calls = [(str(script), (a, b), {}), (str(script), (b, a), {}), (str(script), (a, b), {})]
    try:
        assert docs_tools.start_runs(calls, jobs=2) == 2  # the repeated call is one run
        # Each would wait a minute for the other if they ran one after the other.
        assert "a met b" in docs_tools.example(script, a, b)
        assert "b met a" in docs_tools.example(script, b, a)
        assert docs_tools.run(script, a, b)["stdout"] == "a met b\n"  # the same run, not another
    finally:
        docs_tools.stop_runs()
    assert (tmp_path / "a.count").read_text() == "run\n" and (tmp_path / "b.count").read_text() == "run\n"
    # After stop_runs (the end of a build), a page runs its example again.
    assert docs_tools.run(script, a, b)["stdout"] == "a met b\n"
    assert (tmp_path / "a.count").read_text() == "run\nrun\n"


def test_a_started_run_that_fails_fails_its_page(tmp_path, monkeypatch):
    docs_tools = _load_tool("bayesnb_docs")
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    script = _write_example(tmp_path, "def main(argv=None):\n    raise RuntimeError('boom in the background')\n")
    try:
        assert docs_tools.start_runs([(str(script), (), {})], jobs=2) == 1
        with pytest.raises(docs_tools.ExampleError, match="boom in the background"):
            docs_tools.example(script)
    finally:
        docs_tools.stop_runs()


def test_runs_are_started_only_where_they_can_share_the_program_cache(tmp_path, monkeypatch):
    docs_tools = _load_tool("bayesnb_docs")
    # Each run of the script adds a line to a file: a page served by the started run adds none.
    script = _write_example(
        tmp_path, f"def main(argv=None):\n    open({str(tmp_path / 'runs')!r}, 'a').write('run\\n')\n    return 0\n"
    )
    calls = [(str(script), (), {})]
    monkeypatch.delenv("BAYESNB_DOCS_CACHE", raising=False)
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    try:
        assert docs_tools.start_runs(calls, jobs=1) == 0  # one at a time: each when its page asks
        monkeypatch.setenv("BAYESNB_DOCS_JOBS", "1")
        assert docs_tools.start_runs(calls) == 0
        for bad in ("0", "-2", "two"):
            monkeypatch.setenv("BAYESNB_DOCS_JOBS", bad)
            with pytest.raises(ValueError, match="BAYESNB_DOCS_JOBS must be a positive integer"):
                docs_tools.start_runs(calls)
        monkeypatch.delenv("BAYESNB_DOCS_JOBS")
        # A page naming a script that does not exist fails where it is rendered, as before.
        assert docs_tools.start_runs([("no_such_example", (), {})], jobs=2) == 0
        with pytest.raises(docs_tools.ExampleError, match="no example script"):
            docs_tools.example("no_such_example")
        # A program cache JAX does not lock (no size limit): processes at once could read
        # each other's half-written entries, so the runs wait for their pages.
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "xla"))
        monkeypatch.delenv("JAX_COMPILATION_CACHE_MAX_SIZE", raising=False)
        assert docs_tools.start_runs(calls, jobs=2) == 0
        monkeypatch.setenv("JAX_COMPILATION_CACHE_MAX_SIZE", "-1")
        assert docs_tools.start_runs(calls, jobs=2) == 0
        pytest.importorskip("filelock", reason="JAX locks its program cache with filelock")
        monkeypatch.setenv("JAX_COMPILATION_CACHE_MAX_SIZE", str(1 << 30))
        assert docs_tools.start_runs(calls, jobs=2) == 1
        first, again = docs_tools.run(script), docs_tools.run(script)
        assert again is first  # the started run's result, not a second run
        assert (tmp_path / "runs").read_text() == "run\n"
    finally:
        docs_tools.stop_runs()


def test_stopping_the_runs_kills_the_examples_still_running(tmp_path, monkeypatch):
    # A failed or interrupted build does not wait for the examples it started.
    docs_tools = _load_tool("bayesnb_docs")
    monkeypatch.delenv("BAYESNB_DOCS_CACHE", raising=False)
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    flag = tmp_path / "started"
    script = _write_example(
        tmp_path,
        f"import pathlib, time\ndef main(argv=None):\n    pathlib.Path({str(flag)!r}).touch()\n    time.sleep(300)\n",
    )
    (tmp_path / "other").mkdir()
    queued = _write_example(tmp_path / "other", "def main(argv=None):\n    return 0\n")
    assert docs_tools.start_runs([(str(script), (), {}), (str(queued), (), {})], jobs=2) == 2
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert time.monotonic() < deadline, "the example never started"
        time.sleep(0.05)
    start = time.monotonic()
    docs_tools.stop_runs()
    assert time.monotonic() - start < 60  # not the 300 s the example sleeps
    assert docs_tools._children == set() and docs_tools._started == {}
    # Afterwards a page runs its example as usual.
    assert docs_tools.run(queued)["cached"] is False
