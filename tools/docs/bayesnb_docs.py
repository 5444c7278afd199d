"""Helpers for the executed pages of the bayesnb site.

A tutorial built from an example script is a short Markdown page whose one executed
block is::

    ```python exec="on"
    from bayesnb_docs import example
    print(example("spam_uncertainty"))
    ```

:func:`example` runs ``examples/<name>.py`` in a fresh Python process, as its users run
it, with ``--quick`` (every example has that flag and finishes in seconds with it), and
returns Markdown showing what it printed, the figures it drew, and its source. If the
script fails (an exception or a non-zero exit status), :func:`example` raises, so
markdown-exec reports the error and ``mkdocs build --strict`` fails: a page never shows
output that was not produced by the code next to it.

Figures are collected two ways, so an example needs nothing docs-specific: figures still
open when ``main`` returns (``plt.show()`` is a no-op under the Agg backend), and image
files the script wrote into its working directory (a fresh temporary folder).

An example that reads ``../shared/data`` prints ``skipped: ... not found`` and exits 0
when the data are absent (the examples contract); :func:`example` then puts a warning
box at the top of its output naming what was skipped, so a page built without the data
says so plainly instead of showing an empty run.

Set ``BAYESNB_DOCS_FULL=1`` to run the examples without ``--quick``.

The examples are independent processes, so the build starts them all at once, as many
at a time as the machine has cores (``BAYESNB_DOCS_JOBS`` to choose; 1 runs each when
its page is rendered): ``tools/docs/hooks.py`` reads the ``example(...)`` calls of every
page's executed blocks (:func:`example_calls`) before the first page is rendered and
hands them to :func:`start_runs`; :func:`run` then waits for its run instead of starting
it. What a page shows, and a failure, are the same either way.

Set ``BAYESNB_DOCS_CACHE`` to a folder to keep every run's result there, keyed by
everything that decides it (:func:`run_key`: the script, the arguments, the source of
``bayesnb`` and of this runner, the interpreter and the versions of the libraries it
imports, the shared corpora's files, the environment variables read by JAX and XLA).
A run with the same key is then read back instead of repeated. CI sets it for the test
suite and the documentation build alike: ``tests/test_examples.py`` runs every example
exactly as its page does, through :func:`run`, and the build shows those runs (the page
says so) instead of running each example a second time. Unset (the default), every
build runs every example.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import html
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RUNNER = Path(__file__).resolve().parent / "run_example.py"
IMAGE_TYPES = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}


class ExampleError(RuntimeError):
    """An example script failed while the documentation was built."""


def _script(name):
    path = Path(name)
    if path.suffix != ".py":
        path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        raise ExampleError(f"no example script {path}")
    return path.resolve()


#: Distributions whose version can change what an example prints.
_VERSIONED = (
    "jax", "jaxlib", "numpyro", "numpy", "scipy", "scikit-learn", "arviz", "xarray",
    "matplotlib", "pandas", "dask", "pyarrow",
)
#: Environment variables that do not change a run's result (where compiled programs are
#: kept on disk, which only saves compiling them again, and the folder's size limit, which
#: makes JAX lock it: tests/conftest.py sets it for the test processes that share one).
_NEUTRAL_ENV = {
    "JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "JAX_COMPILATION_CACHE_MAX_SIZE",
}
SHARED_DATA = ROOT.parent / "shared" / "data"


def run_key(script, argv):
    """The digest that decides whether a cached run of ``script`` with ``argv`` is this run.

    Parameters
    ----------
    script : Path
        The example script.
    argv : list of str
        Its command-line arguments.

    Returns
    -------
    str
        A SHA-256 hex digest of the script, the arguments, every ``.py`` file of the
        ``bayesnb`` package and of this folder, the interpreter's version, the installed
        versions of the libraries in ``_VERSIONED``, the names, sizes and modification
        times of the files under ``../shared/data`` (an example reads them or says it
        skipped them), and the ``JAX_*`` / ``XLA_*`` environment variables.
    """
    from importlib import metadata

    digest = hashlib.sha256()

    def feed(label, data):
        data = data if isinstance(data, bytes) else str(data).encode()
        digest.update(f"{label}:{len(data)}:".encode() + data)

    feed("script", Path(script).read_bytes())
    feed("argv", json.dumps(list(argv)))
    for folder in (ROOT / "bayesnb", Path(__file__).resolve().parent):
        for path in sorted(folder.rglob("*.py")):
            feed(path.relative_to(ROOT).as_posix(), path.read_bytes())
    feed("python", sys.version)
    for dist in _VERSIONED:
        try:
            feed(dist, metadata.version(dist))
        except metadata.PackageNotFoundError:
            feed(dist, "absent")
    if SHARED_DATA.is_dir():
        for path in sorted(SHARED_DATA.rglob("*")):
            if path.is_file():
                st = path.stat()
                feed(path.relative_to(SHARED_DATA).as_posix(), f"{st.st_size}:{st.st_mtime_ns}")
    else:
        feed("shared", "absent")
    for var in sorted(os.environ):
        if var.startswith(("JAX_", "XLA_")) and var not in _NEUTRAL_ENV:
            feed(var, os.environ[var])
    return digest.hexdigest()


def _cache_folder():
    folder = os.environ.get("BAYESNB_DOCS_CACHE", "")
    return Path(folder) if folder else None


def _read_cached(folder, key):
    path = folder / f"{key}.json"
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if stored.get("key") != key:
        return None
    stored["figures"] = [(n, kind, base64.b64decode(data)) for n, kind, data in stored["figures"]]
    stored["cached"] = True
    return stored


def _write_cached(folder, key, result):
    folder.mkdir(parents=True, exist_ok=True)
    stored = dict(result, key=key, cached=False)
    stored["figures"] = [(n, kind, base64.b64encode(data).decode("ascii")) for n, kind, data in result["figures"]]
    # Written whole under another name, then renamed: a reader (another test worker, the
    # documentation build) never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(stored, f)
        os.replace(tmp, folder / f"{key}.json")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(name, *args, quick=None, timeout=600):
    """Run an example script in a fresh interpreter and collect what it produced.

    Parameters
    ----------
    name : str or path
        ``"spam_uncertainty"`` for ``examples/spam_uncertainty.py``, or a path to a script.
    *args : str
        Extra command-line arguments for the script's ``main(argv)``.
    quick : bool, optional
        Pass ``--quick``; default: yes, unless the environment sets ``BAYESNB_DOCS_FULL=1``.
    timeout : float
        Seconds before the run counts as failed.

    Returns
    -------
    dict
        ``stdout`` and ``stderr`` (str), ``figures`` (list of ``(file name, media type,
        bytes)``), ``seconds`` (float, of the run itself), ``argv`` (list of str),
        ``work_entries`` (sorted names of what the script left in its working
        directory) and ``cached`` (bool: read back from ``BAYESNB_DOCS_CACHE``).

    Raises
    ------
    ExampleError
        If the script raises, exits with a non-zero status or runs past ``timeout``.
        A failed run is never cached.
    """
    script, argv = _invocation(name, args, quick)
    started = _started.get((script, tuple(argv)))
    if started is not None:
        return started.result()  # an ExampleError of the run is raised here
    return _run(script, argv, timeout)


def _invocation(name, args, quick):
    """The script and its command line: what identifies a run."""
    if quick is None:
        quick = os.environ.get("BAYESNB_DOCS_FULL", "") not in ("1", "true", "yes")
    return _script(name), (["--quick"] if quick else []) + [str(a) for a in args]


def _run(script, argv, timeout):
    cache = _cache_folder()
    key = run_key(script, argv) if cache is not None else None
    if cache is not None:
        cached = _read_cached(cache, key)
        if cached is not None:
            return cached
    result = _run_fresh(script, argv, timeout)
    if cache is not None:
        _write_cached(cache, key, result)
    return result


#: Runs started ahead of their pages by :func:`start_runs`: ``(script, argv)`` -> future.
_started = {}
_pool = None
#: The example processes running now (killed by :func:`stop_runs`).
_children = set()
_children_lock = threading.Lock()
_stopping = False
#: Held while this process's environment is changed or copied for a child.
_ENV_LOCK = threading.Lock()


def _jobs():
    value = os.environ.get("BAYESNB_DOCS_JOBS", "")
    if value:
        if not (value.isdigit() and int(value) >= 1):
            raise ValueError(f"BAYESNB_DOCS_JOBS must be a positive integer, not {value!r}")
        return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _shared_program_cache_is_safe():
    """Whether processes running at once may share the XLA program cache set for this build.

    JAX writes a cache entry in place and locks the folder only under a size limit (with
    ``filelock``); without the lock a process could read another's half-written entry.
    """
    if not os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return True
    if os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE", "-1") in ("", "-1"):
        return False  # no size limit: JAX takes no lock
    return importlib.util.find_spec("filelock") is not None


def start_runs(calls, jobs=None):
    """Start the example runs of ``calls`` in the background, ``jobs`` at a time.

    :func:`run` (and :func:`example`) with the same script and arguments then waits for
    the run started here and returns its result, or raises its :class:`ExampleError`.
    Calls already started are not started again. With one job, or where the processes
    could not share the build's XLA program cache safely (a cache folder without JAX's
    lock), nothing is started and every run happens when its page asks for it.

    Parameters
    ----------
    calls : iterable of (str, tuple of str, dict)
        ``(name, args, keywords)`` as :func:`example_calls` returns them; the keywords
        ``quick`` and ``timeout`` are honoured.
    jobs : int, optional
        Runs at a time; default ``BAYESNB_DOCS_JOBS``, else the number of usable cores.

    Returns
    -------
    int
        How many runs were started.
    """
    global _pool
    jobs = _jobs() if jobs is None else jobs
    if jobs < 2 or not _shared_program_cache_is_safe():
        return 0
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bayesnb-docs-example")
    started = 0
    for name, args, keywords in calls:
        try:
            script, argv = _invocation(name, args, keywords.get("quick"))
        except Exception:  # noqa: BLE001 - no such script, a name that is not one: the page fails with it
            continue
        if (script, tuple(argv)) not in _started:
            _started[(script, tuple(argv))] = _pool.submit(_run, script, argv, keywords.get("timeout", 600))
            started += 1
    return started


def stop_runs():
    """End the runs :func:`start_runs` started: those waiting are cancelled, those running killed.

    Called at the end of a build, when a build fails and when MkDocs exits (an
    interrupted build does not wait for the examples still queued or running). Every
    page that asked for a run has its result by then; a later :func:`run` starts afresh.

    Returns
    -------
    None
    """
    global _pool, _stopping
    pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    with _children_lock:
        _stopping = True  # a background run about to start its process gives up instead
        for proc in _children:
            proc.kill()
    try:
        if pool is not None:
            pool.shutdown(wait=True)  # the killed runs' threads return at once
    finally:
        with _children_lock:
            _stopping = False
        _started.clear()


def executed_blocks(markdown):
    """The code of the blocks markdown-exec runs on a page.

    Blocks quoted inside a longer fence (a page showing how to write one) do not run.

    Parameters
    ----------
    markdown : str

    Returns
    -------
    list of str
    """
    markdown = re.sub(r"^(`{4,})[^\n]*\n.*?^\1[ \t]*$", "", markdown, flags=re.S | re.M)
    return re.findall(r'^```python exec="on"[^\n]*\n(.*?)^```', markdown, flags=re.S | re.M)


def example_calls(markdown):
    """The ``example(...)`` calls of a page's executed blocks, where their arguments are literals.

    Parameters
    ----------
    markdown : str

    Returns
    -------
    list of (str, tuple of str, dict)
        ``(name, args, keywords)`` of each call, in page order. A call with a computed
        argument is left out (it runs when its page is rendered).
    """
    calls = []
    for block in executed_blocks(markdown):
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue  # markdown-exec reports it when the page is rendered
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "example"):
                continue
            try:
                args = [ast.literal_eval(a) for a in node.args]
                keywords = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue  # not literals: the call runs when its page is rendered
            if args and None not in keywords:
                calls.append((args[0], tuple(args[1:]), keywords))
    return calls


def _run_fresh(script, argv, timeout):
    with tempfile.TemporaryDirectory(prefix="bayesnb-docs-") as tmp:
        tmp = Path(tmp)
        work, figdir = tmp / "work", tmp / "figures"
        work.mkdir()
        figdir.mkdir()
        with _ENV_LOCK:  # command() sets COLUMNS for its own call only
            env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
        start = time.perf_counter()
        with _children_lock:  # started and registered at once: stop_runs kills every child it did not refuse
            if _stopping:
                raise ExampleError(f"{script.name} {' '.join(argv)} was not run: the build stopped")
            proc = subprocess.Popen(
                [sys.executable, str(RUNNER), str(script), str(figdir), json.dumps(argv)],
                cwd=work,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            _children.add(proc)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.communicate()
            raise ExampleError(f"{script.name} {' '.join(argv)} ran past {timeout} s") from exc
        finally:
            with _children_lock:
                _children.discard(proc)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise ExampleError(
                f"{script.name} {' '.join(argv)} failed with exit status {proc.returncode}:\n"
                + textwrap.indent((stderr or stdout)[-4000:], "    ")
            )
        figures = []
        for folder in (figdir, work):
            for path in sorted(folder.rglob("*")):
                kind = IMAGE_TYPES.get(path.suffix.lower())
                if kind and path.is_file():
                    figures.append((path.name, kind, path.read_bytes()))
        work_entries = sorted(p.name for p in work.iterdir())
    return {
        "stdout": stdout, "stderr": stderr, "figures": figures, "seconds": seconds, "argv": argv,
        "work_entries": work_entries, "cached": False,
    }


def _fence(text, lang=""):
    """A fenced code block around ``text``, its fence longer than any backtick run inside."""
    ticks = "`" * max([3] + [len(run) + 1 for run in re.findall(r"`+", text)])
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}\n"


# A line in which an example says that it (or a part of it) did not run for lack of data.
_SKIPPED = re.compile(r"^.*\bskipped: .*\bnot found\b.*$", re.M)


def skip_notice(stdout):
    """A warning admonition for the ``skipped: ... not found`` lines of an example's output.

    Parameters
    ----------
    stdout : str
        What the example printed.

    Returns
    -------
    str
        Markdown (an empty string when nothing was skipped).
    """
    lines = [m.group(0).strip() for m in _SKIPPED.finditer(stdout)]
    if not lines:
        return ""
    body = "\n".join(lines)
    return (
        '!!! warning "Not run on this build: data not found"\n\n'
        "    This page was built on a machine without the data this example reads (the\n"
        "    shared corpora in `../shared/data`, or `--data-dir`), so the example skipped\n"
        "    that part and its results are missing below:\n\n"
        + textwrap.indent(_fence(body, "text"), "    ")
    )


def figure_html(data, media_type="image/png", caption=None):
    """An ``<figure>`` with the image inlined as a data URI (the page stays self-contained)."""
    uri = f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    alt = html.escape(caption or "figure")
    return f'<figure><img src="{uri}" alt="{alt}" />{cap}</figure>\n'


def _provenance(result):
    if result.get("cached"):
        return (f"{result['seconds']:.1f} s, from an identical earlier run (same script, arguments, code and "
                "library versions) read back from the build's cache")
    return f"run while this page was built, {result['seconds']:.1f} s"


def example(name, *args, quick=None, timeout=600, source=True):
    """Markdown for a tutorial page: the command, its printed output, its figures, its source.

    Parameters
    ----------
    name : str or path
        Example name (``examples/<name>.py``) or a path to a script.
    *args : str
        Extra command-line arguments.
    quick : bool, optional
        See :func:`run`.
    timeout : float
        See :func:`run`.
    source : bool
        Append the script's source in a collapsed block.

    Returns
    -------
    str
        Markdown (print it from a markdown-exec block).
    """
    script = _script(name)
    result = run(script, *args, quick=quick, timeout=timeout)
    rel = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    parts = [
        skip_notice(result["stdout"]),
        _fence(f"$ python {rel} {' '.join(result['argv'])}".rstrip(), "console"),
        f"Output ({_provenance(result)}):\n",
        _fence(result["stdout"] or "(no output)", "text"),
    ]
    for fname, kind, data in result["figures"]:
        parts.append(figure_html(data, kind, caption=fname))
    if source:
        body = textwrap.indent(_fence(script.read_text(), "python"), "    ")
        parts.append(f'??? example "Source: {rel}"\n\n{body}')
    return "\n".join(parts)


def matplotlib_figure(fig, caption=None, dpi=96):
    """Markdown/HTML for a matplotlib figure drawn in an executed block (PNG, inlined).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    caption : str, optional
    dpi : int

    Returns
    -------
    str
    """
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return figure_html(buf.getvalue(), "image/png", caption)



def command(*args):
    """Markdown for a ``bayesnb`` command run while the page is built: the line and its output.

    Calls the command's entry point, :func:`bayesnb.cli.command.main`, in this process (what the
    ``bayesnb`` script runs, without starting another interpreter) and captures what it
    prints.

    Parameters
    ----------
    *args : str
        Arguments of the ``bayesnb`` command.

    Returns
    -------
    str
        A ``console`` code block.

    Raises
    ------
    ExampleError
        If the command returns a non-zero exit status.
    """
    import contextlib
    import io

    from bayesnb.cli.command import main

    out, err = io.StringIO(), io.StringIO()
    # argparse wraps help text to the terminal width. The lock keeps the examples running
    # in the background (start_runs) from copying this environment meanwhile.
    with _ENV_LOCK:
        columns = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "88"
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(list(args))
        finally:
            if columns is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = columns
    if status:
        raise ExampleError(f"bayesnb {' '.join(args)} exited with {status}:\n{err.getvalue()[-4000:]}")
    return _fence(f"$ bayesnb {' '.join(args)}\n{out.getvalue()}", "console")
